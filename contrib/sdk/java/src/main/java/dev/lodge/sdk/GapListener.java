package dev.lodge.sdk;

/** Told of output an attach lost because the ring no longer held it. */
@FunctionalInterface
public interface GapListener {
	/** The bytes from {@code from} to {@code to} (exclusive) were lost. */
	void onGap(long from, long to);
}
