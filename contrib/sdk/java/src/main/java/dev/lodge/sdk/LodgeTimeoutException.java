package dev.lodge.sdk;

/**
 * A client-side timeout (connect, request or wait) ran out. Distinct from
 * the server-side {@code timeoutSeconds} of a command, which ends the
 * command and reports {@code timedOut} in its result.
 */
public class LodgeTimeoutException extends LodgeException {
	private static final long serialVersionUID = 1L;

	/** The error with a message. */
	public LodgeTimeoutException(String message) {
		super(message);
	}
}
