package dev.lodge.sdk;

/**
 * An attach in strict mode lost output: the ring no longer held the bytes
 * from {@code from} to {@code to}.
 */
public class GapException extends LodgeException {
	private static final long serialVersionUID = 1L;

	/** The first offset lost. */
	public final long from;
	/** One past the last offset lost. */
	public final long to;

	/** The error of a lost range. */
	public GapException(long from, long to) {
		super("output lost between offsets " + from + " and " + to);
		this.from = from;
		this.to = to;
	}
}
