package dev.lodge.sdk;

/** 422 {@code spawn_failed}: the process could not be started (never a non-zero exit code). */
public class SpawnFailedException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public SpawnFailedException(int status, String message) {
		super("spawn_failed", status, message);
	}
}
