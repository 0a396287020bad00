package dev.lodge.sdk;

/**
 * The calling thread was interrupted: the call ended at once and closed
 * its connection (an exec stream's process is then killed by the daemon).
 * The thread's interrupt flag is set again when this is thrown.
 */
public class LodgeInterruptedException extends LodgeException {
	private static final long serialVersionUID = 1L;

	/** The error with its cause. */
	public LodgeInterruptedException(InterruptedException cause) {
		super("interrupted", cause);
	}
}
