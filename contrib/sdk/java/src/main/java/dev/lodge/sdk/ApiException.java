package dev.lodge.sdk;

import java.util.Map;

/**
 * The daemon refused a request or reported an error: an HTTP error reply,
 * a refused WebSocket upgrade, or an {@code error} message on an open
 * WebSocket. Each protocol code has its subclass; an unknown code is a
 * plain {@code ApiException}, handled like {@code internal}.
 */
public class ApiException extends LodgeException {
	private static final long serialVersionUID = 1L;

	/** The protocol's error code, such as {@code "not_found"}. */
	public final String code;
	/** The HTTP status, or 0 for an error message on an open WebSocket. */
	public final int status;
	/** The daemon's message, for people. */
	public final String daemonMessage;

	/** An error of a code, a status (0: none) and the daemon's message. */
	public ApiException(String code, int status, String message) {
		super(code + (status != 0 ? " (HTTP " + status + ")" : "") + ": " + message);
		this.code = code;
		this.status = status;
		this.daemonMessage = message;
	}

	/** The protocol's error code. */
	public String code() {
		return code;
	}

	/** The HTTP status, or 0 for an error message on an open WebSocket. */
	public int status() {
		return status;
	}

	/** The typed error of a protocol code. */
	public static ApiException of(String code, int status, String message) {
		switch (code) {
		case "bad_request": return new BadRequestException(status, message);
		case "unauthorized": return new UnauthorizedException(status, message);
		case "forbidden": return new ForbiddenException(status, message);
		case "not_found": return new NotFoundException(status, message);
		case "method_not_allowed": return new MethodNotAllowedException(status, message);
		case "request_timeout": return new RequestTimeoutException(status, message);
		case "conflict": return new ConflictException(status, message);
		case "payload_too_large": return new PayloadTooLargeException(status, message);
		case "spawn_failed": return new SpawnFailedException(status, message);
		case "header_too_large": return new HeaderTooLargeException(status, message);
		case "internal": return new InternalException(status, message);
		case "unavailable": return new UnavailableException(status, message);
		default: return new ApiException(code, status, message);
		}
	}

	/** The typed error of an HTTP error reply and its JSON body. */
	static ApiException fromReply(int status, String body) {
		try {
			Object err = ((Map<?, ?>) Json.parse(body)).get("error");
			Map<?, ?> m = (Map<?, ?>) err;
			return of((String) m.get("code"), status, (String) m.get("message"));
		} catch (RuntimeException e) {
			return of(codeOfStatus(status), status, body.isEmpty() ? "HTTP " + status : body);
		}
	}

	/** The protocol code of an HTTP status, for a reply without a body. */
	static String codeOfStatus(int status) {
		switch (status) {
		case 400: return "bad_request";
		case 401: return "unauthorized";
		case 403: return "forbidden";
		case 404: return "not_found";
		case 405: return "method_not_allowed";
		case 408: return "request_timeout";
		case 409: return "conflict";
		case 413: return "payload_too_large";
		case 422: return "spawn_failed";
		case 431: return "header_too_large";
		case 503: return "unavailable";
		default: return "internal";
		}
	}
}
