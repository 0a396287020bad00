package dev.lodge.sdk;

/** 431 {@code header_too_large}. */
public class HeaderTooLargeException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public HeaderTooLargeException(int status, String message) {
		super("header_too_large", status, message);
	}
}
