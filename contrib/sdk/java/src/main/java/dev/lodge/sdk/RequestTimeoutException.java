package dev.lodge.sdk;

/** 408 {@code request_timeout}: the request was sent too slowly. */
public class RequestTimeoutException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public RequestTimeoutException(int status, String message) {
		super("request_timeout", status, message);
	}
}
