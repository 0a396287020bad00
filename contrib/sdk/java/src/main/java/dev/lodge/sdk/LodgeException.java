package dev.lodge.sdk;

/**
 * The base of every error this SDK throws; unchecked. An error the daemon
 * reported is an {@link ApiException} subclass of its protocol code.
 */
public class LodgeException extends RuntimeException {
	private static final long serialVersionUID = 1L;

	/** An error with a message. */
	public LodgeException(String message) {
		super(message);
	}

	/** An error with a message and its cause. */
	public LodgeException(String message, Throwable cause) {
		super(message, cause);
	}
}
