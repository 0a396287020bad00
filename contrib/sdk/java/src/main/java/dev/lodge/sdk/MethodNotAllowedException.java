package dev.lodge.sdk;

/** 405 {@code method_not_allowed}. */
public class MethodNotAllowedException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public MethodNotAllowedException(int status, String message) {
		super("method_not_allowed", status, message);
	}
}
