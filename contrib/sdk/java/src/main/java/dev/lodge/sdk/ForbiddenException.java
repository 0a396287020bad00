package dev.lodge.sdk;

/** 403 {@code forbidden}: not allowed (a read-only client, another user's session). */
public class ForbiddenException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public ForbiddenException(int status, String message) {
		super("forbidden", status, message);
	}
}
