/**
 * Typed errors: one class per protocol error code (lodge-protocol(7), ERROR
 * REPLIES), each carrying the code, the HTTP status and the daemon's
 * message, and the client's own failures beside them.
 */

/** Any failure reported by lodged, or by this client on its behalf. */
export class LodgeError extends Error {
  /** The protocol's code, such as "not_found"; the client's own for others. */
  readonly code: string;
  /** The HTTP status that goes with the code (0 for the client's own). */
  readonly status: number;

  constructor(code: string, status: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/** 400: a malformed request, field or query, or an operation that does not apply. */
export class BadRequestError extends LodgeError {}
/** 401: a missing or wrong token. */
export class UnauthorizedError extends LodgeError {}
/** 403: the caller may not do this. */
export class ForbiddenError extends LodgeError {}
/** 404: no such path or session. */
export class NotFoundError extends LodgeError {}
/** 405: a known path with the wrong method. */
export class MethodNotAllowedError extends LodgeError {}
/** 408: the daemon gave up on a request head or body that came too slowly. */
export class RequestTimeoutError extends LodgeError {}
/** 409: a name taken, or a process that has exited or whose input is closed. */
export class ConflictError extends LodgeError {}
/** 413: a request body over the daemon's limit. */
export class PayloadTooLargeError extends LodgeError {}
/** 422: the process could not be started (never an exit code). */
export class SpawnFailedError extends LodgeError {}
/** 431: a request head over the daemon's limit. */
export class HeaderTooLargeError extends LodgeError {}
/** 500, or a code this client does not know: a fault in lodged. */
export class InternalError extends LodgeError {}
/** 503: a limit of sessions, clients, queued input or memory was reached. */
export class UnavailableError extends LodgeError {}

/**
 * The connection to lodged ended before the operation did: for an exec
 * stream, before its exit message (its process is then killed by the
 * daemon), never a success or exit code 0.
 */
export class ConnectionLostError extends LodgeError {
  constructor(message: string, options?: ErrorOptions) {
    super('connection_lost', 0, message, options);
  }
}

/** A client-side timeout (connectTimeoutMs, requestTimeoutMs) ran out. */
export class ClientTimeoutError extends LodgeError {
  constructor(message: string) {
    super('client_timeout', 0, message);
  }
}

/** In strict mode, output that the session's ring no longer held. */
export class GapError extends LodgeError {
  /** The first offset missed. */
  readonly from: number;
  /** Where the output goes on. */
  readonly to: number;

  constructor(from: number, to: number) {
    super('gap', 0, `output from ${from} to ${to} was lost from the session's ring`);
    this.from = from;
    this.to = to;
  }
}

/** lodged sent something the protocol does not allow. */
export class ProtocolError extends LodgeError {
  constructor(message: string) {
    super('protocol', 0, message);
  }
}

type ErrorClass = new (code: string, status: number, message: string) => LodgeError;

const byCode: Record<string, [ErrorClass, number]> = {
  bad_request: [BadRequestError, 400],
  unauthorized: [UnauthorizedError, 401],
  forbidden: [ForbiddenError, 403],
  not_found: [NotFoundError, 404],
  method_not_allowed: [MethodNotAllowedError, 405],
  request_timeout: [RequestTimeoutError, 408],
  conflict: [ConflictError, 409],
  payload_too_large: [PayloadTooLargeError, 413],
  spawn_failed: [SpawnFailedError, 422],
  header_too_large: [HeaderTooLargeError, 431],
  internal: [InternalError, 500],
  unavailable: [UnavailableError, 503],
};

const byStatus: Record<number, ErrorClass> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  405: MethodNotAllowedError,
  408: RequestTimeoutError,
  409: ConflictError,
  411: BadRequestError,
  413: PayloadTooLargeError,
  422: SpawnFailedError,
  431: HeaderTooLargeError,
  503: UnavailableError,
  505: BadRequestError,
};

/**
 * The error for a code and message, from an error message on a WebSocket
 * (status: the code's) or an HTTP reply (status: the reply's).  The class
 * follows the code, or the status when the code is unknown; an unknown code
 * with an unknown status is an InternalError.
 */
export function errorFor(code: string, message: string, status?: number): LodgeError {
  const known = byCode[code];
  if (known !== undefined) return new known[0](code, status ?? known[1], message);
  const cls = status !== undefined ? byStatus[status] : undefined;
  return new (cls ?? InternalError)(code, status ?? 500, message);
}

/** The error for a non-2xx HTTP reply with its JSON body. */
export function errorFromReply(status: number, body: Uint8Array): LodgeError {
  let code = '';
  let message = `HTTP ${status}`;
  try {
    const j = JSON.parse(new TextDecoder().decode(body)) as { error?: { code?: unknown; message?: unknown } };
    if (typeof j.error?.code === 'string') code = j.error.code;
    if (typeof j.error?.message === 'string') message = j.error.message;
  } catch {
    // not JSON: keep the status alone
  }
  return errorFor(code, message, status);
}
