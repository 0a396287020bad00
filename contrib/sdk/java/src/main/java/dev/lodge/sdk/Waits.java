package dev.lodge.sdk;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Blocking on a future the SDK's way: unchecked errors, interruption ends the call. */
final class Waits {
	private Waits() {
	}

	/**
	 * The future's value. An interrupt runs {@code onInterrupt} (which
	 * closes the call's connection), sets the flag again and throws
	 * {@link LodgeInterruptedException}; a null timeout waits for ever.
	 */
	static <T> T await(CompletableFuture<T> f, Duration timeout, Runnable onInterrupt) {
		try {
			if (timeout == null)
				return f.get();
			return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
		} catch (InterruptedException e) {
			onInterrupt.run();
			Thread.currentThread().interrupt();
			throw new LodgeInterruptedException(e);
		} catch (TimeoutException e) {
			throw new LodgeTimeoutException("no answer within " + timeout);
		} catch (ExecutionException e) {
			throw unwrap(e.getCause());
		}
	}

	/** The SDK's exception for a future's failure. */
	static LodgeException unwrap(Throwable t) {
		while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null)
			t = t.getCause();
		if (t instanceof LodgeException) {
			LodgeException e = (LodgeException) t;
			// rethrown on the caller's thread: keep the caller's frames too
			e.addSuppressed(new Exception("awaited here"));
			return e;
		}
		return new ConnectionLostException(String.valueOf(t), t);
	}
}
