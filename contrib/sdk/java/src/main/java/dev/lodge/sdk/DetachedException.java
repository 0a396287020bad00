package dev.lodge.sdk;

/** The attach was detached by the caller before the process exited. */
public class DetachedException extends LodgeException {
	private static final long serialVersionUID = 1L;

	/** The error. */
	public DetachedException() {
		super("detached");
	}
}
