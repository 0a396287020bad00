package dev.lodge.sdk;

/** Bytes of a session's ring with where they sit in its output. */
public final class SessionLog {
	/** The bytes. */
	public final byte[] data;
	/** The offset of the first byte ({@code Lodge-Log-Start}). */
	public final long start;
	/** One past the last byte ({@code Lodge-Log-End}). */
	public final long end;

	SessionLog(byte[] data, long start, long end) {
		this.data = data;
		this.start = start;
		this.end = end;
	}
}
