package dev.lodge.sdk;

/** 413 {@code payload_too_large}: the request body is over the limit. */
public class PayloadTooLargeException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public PayloadTooLargeException(int status, String message) {
		super("payload_too_large", status, message);
	}
}
