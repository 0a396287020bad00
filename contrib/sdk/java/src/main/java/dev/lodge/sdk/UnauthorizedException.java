package dev.lodge.sdk;

/** 401 {@code unauthorized}: a missing or wrong token. */
public class UnauthorizedException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public UnauthorizedException(int status, String message) {
		super("unauthorized", status, message);
	}
}
