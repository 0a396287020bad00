package dev.lodge.sdk;

import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The SDK's benchmark against LODGE_URL and LODGE_TOKEN: prints one JSON
 * line with exec p50/p99 (2,000 sequential {@code /bin/true}), the
 * throughput of a 1 GiB exec stream in GB/s (10^9 bytes), and the PTY
 * keystroke round trip (2,000 one-byte echoes), after an untimed warm-up of
 * each (three rounds of 500 execs, a 256 MiB stream and 500 echoes) and a
 * second's pause.
 * Run: {@code mvn -q compile exec:java}; {@code -Dexec.args="--execs N
 * --keys N --bytes N"} changes the sizes.
 */
public final class Bench {
	private Bench() {
	}

	private static long pct(long[] v, double p) {
		long[] s = v.clone();
		Arrays.sort(s);
		return s[Math.min(s.length - 1, (int) Math.floor(p * s.length))];
	}

	/** Runs the benchmark and prints its JSON line. */
	public static void main(String[] argv) throws Exception {
		int n = 2000, nkey = 2000;
		long nbytes = 1L << 30;
		for (int i = 0; i + 1 < argv.length; i += 2) {
			switch (argv[i]) {
			case "--execs" -> n = Integer.parseInt(argv[i + 1]);
			case "--keys" -> nkey = Integer.parseInt(argv[i + 1]);
			case "--bytes" -> nbytes = Long.parseLong(argv[i + 1]);
			default -> throw new IllegalArgumentException("unknown option " + argv[i]);
			}
		}
		Sandbox sb = Sandbox.connect();
		ExecOptions t = new ExecOptions().setArgs(List.of("/bin/true"));
		String name = "bench-java-" + UUID.randomUUID().toString().substring(0, 8);
		sb.createSession(new CreateSessionOptions().setName(name).setPty(true)
		    .setCommand("stty raw -echo && printf R && exec cat"));
		BlockingQueue<byte[]> q = new ArrayBlockingQueue<>(4096);
		SessionAttachHandle h = sb.attachSession(name, new SessionAttachOptions().setOnStdout(q::add));
		long[] key = new long[nkey];
		try {
			StringBuilder seen = new StringBuilder();
			while (seen.indexOf("R") < 0) {
				byte[] b = q.poll(30, TimeUnit.SECONDS);
				if (b == null)
					throw new IllegalStateException("no R");
				seen.append(new String(b, java.nio.charset.StandardCharsets.ISO_8859_1));
			}
			warmUp(sb, t, h, q, Math.min(nbytes, 256L << 20));

			long[] ex = new long[n];
			for (int i = 0; i < n; i++) {
				long t0 = System.nanoTime();
				sb.exec(t);
				ex[i] = (System.nanoTime() - t0) / 1000;
			}
			double gbps = stream(sb, nbytes);
			keys(h, q, key);
			System.out.printf(java.util.Locale.ROOT,
			    "{\"sdk\":\"java\",\"exec_p50_us\":%d,\"exec_p99_us\":%d,\"stream_gbps\":%.3f,\"key_p50_us\":%d,\"key_p99_us\":%d}%n",
			    pct(ex, 0.50), pct(ex, 0.99), gbps, pct(key, 0.50), pct(key, 0.99));
		} finally {
			h.detach();
			sb.deleteSession(name);
		}
	}

	/**
	 * Runs every measured path untimed, three rounds of 500 execs, a
	 * stream and 500 round trips, then pauses a second. On two cores the
	 * JIT's compiler threads otherwise take the CPU from the timed
	 * figures: a stream's hot path runs once per 64 KiB message, and after
	 * a single 256 MiB warm-up its methods were still being compiled
	 * within the timed GiB. Each round's time in compilation goes to
	 * stderr.
	 */
	private static void warmUp(Sandbox sb, ExecOptions t, SessionAttachHandle h,
	    BlockingQueue<byte[]> q, long nbytes) throws InterruptedException {
		java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
		for (int round = 1; round <= 3; round++) {
			long c0 = jit.getTotalCompilationTime(), t0 = System.nanoTime();
			for (int i = 0; i < 500; i++)
				sb.exec(t);
			stream(sb, nbytes);
			keys(h, q, new long[500]);
			System.err.printf("bench: warm-up round %d: %d ms, %d ms compiling%n", round,
			    (System.nanoTime() - t0) / 1000000, jit.getTotalCompilationTime() - c0);
		}
		Thread.sleep(1000);
	}

	/** Reads an exec stream of {@code nbytes} zeros to its exit: GB/s. */
	private static double stream(Sandbox sb, long nbytes) {
		AtomicLong bytes = new AtomicLong();
		long t0 = System.nanoTime();
		ExecExitInfo x = sb.execStream(new ExecStreamOptions().setCommand("head -c " + nbytes + " /dev/zero")
		    .setOnStdout(b -> bytes.addAndGet(b.length))).waitForExit();
		double secs = (System.nanoTime() - t0) / 1e9;
		if (x.code == null || x.code != 0 || bytes.get() != nbytes)
			throw new IllegalStateException("stream: " + x + " " + bytes.get());
		return bytes.get() / secs / 1e9;
	}

	/** One-byte round trips, each timed into {@code key} (microseconds). */
	private static void keys(SessionAttachHandle h, BlockingQueue<byte[]> q, long[] key) throws InterruptedException {
		byte[] one = {'k'};
		for (int i = 0; i < key.length; i++) {
			long k0 = System.nanoTime();
			h.write(one);
			byte[] b = q.poll(30, TimeUnit.SECONDS);
			if (b == null)
				throw new IllegalStateException("no echo");
			key[i] = (System.nanoTime() - k0) / 1000;
		}
	}
}
