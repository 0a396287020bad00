package dev.lodge.sdk;

/** 404 {@code not_found}: no such session or path. */
public class NotFoundException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public NotFoundException(int status, String message) {
		super("not_found", status, message);
	}
}
