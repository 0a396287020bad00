package dev.lodge.sdk;

/** 503 {@code unavailable}: a limit was reached, or a worker cannot be reached. */
public class UnavailableException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public UnavailableException(int status, String message) {
		super("unavailable", status, message);
	}
}
