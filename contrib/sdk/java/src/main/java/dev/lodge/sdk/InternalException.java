package dev.lodge.sdk;

/** 500 {@code internal}: a fault in lodged. */
public class InternalException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public InternalException(int status, String message) {
		super("internal", status, message);
	}
}
