package dev.lodge.sdk;

/** 409 {@code conflict}: the name is taken, or the process has exited or its input is closed. */
public class ConflictException extends ApiException {
	private static final long serialVersionUID = 1L;

	/** The error with its HTTP status (0 on an open WebSocket) and the daemon's message. */
	public ConflictException(int status, String message) {
		super("conflict", status, message);
	}
}
