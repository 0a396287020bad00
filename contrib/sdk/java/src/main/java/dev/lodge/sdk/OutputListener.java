package dev.lodge.sdk;

/** Receives output with where it sits in the process's output. */
@FunctionalInterface
public interface OutputListener {
	/**
	 * One chunk of output.
	 *
	 * @param stream {@code "stdout"} or {@code "stderr"}
	 * @param offset the position of the chunk's first byte (one counter for both streams)
	 * @param data the bytes
	 */
	void onOutput(String stream, long offset, byte[] data);
}
