package dev.lodge.sdk;

/** 400 {@code bad_request}: a malformed request, field or query. */
public class BadRequestException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public BadRequestException(int status, String message) {
		super("bad_request", status, message);
	}
}
