package dev.lodge.sdk;

/**
 * The daemon could not be reached, or a stream ended without an
 * {@code exit} message. Never a success and never exit code 0: an exec
 * stream's process is killed by the daemon when its connection drops; an
 * attach throws this only once resuming has failed.
 */
public class ConnectionLostException extends LodgeException {
	private static final long serialVersionUID = 1L;

	/** The error with a message. */
	public ConnectionLostException(String message) {
		super(message);
	}

	/** The error with a message and its cause. */
	public ConnectionLostException(String message, Throwable cause) {
		super(message, cause);
	}
}
