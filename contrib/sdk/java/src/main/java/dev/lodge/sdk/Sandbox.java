package dev.lodge.sdk;

import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.eclipse.jetty.client.BytesRequestContent;
import org.eclipse.jetty.client.CompletableResponseListener;
import org.eclipse.jetty.client.ContentResponse;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;

/**
 * A client of one lodged. Thread-safe; one instance serves any number of
 * calls at once. Every blocking call throws only unchecked
 * {@link LodgeException}s and has a {@code CompletableFuture} variant
 * ending in {@code Async}. An interrupted thread ends a blocking call at
 * once, closing its connection, with {@link LodgeInterruptedException}.
 */
public final class Sandbox {
	private final String base;
	private final String wsBase;
	private final String token;
	private final Path socket;
	private final Duration connectTimeout;
	private final Duration requestTimeout;
	private final Transport transport;
	/** The largest REST reply read (a session's log, an exec's output). */
	private static final int MAX_REPLY = Integer.MAX_VALUE - 64;

	private Sandbox(String url, Path socket, String token, Duration connectTimeout, Duration requestTimeout) {
		String hostPort = "localhost"; // over the Unix socket: the Host header only
		if (url != null) {
			URI u = URI.create(url);
			if (!"http".equals(u.getScheme()) && !"ws".equals(u.getScheme()) || u.getHost() == null)
				throw new IllegalArgumentException("a lodge URL is http://host:port, not " + url);
			hostPort = u.getRawAuthority();
			if (u.getPort() < 0)
				hostPort += ":5634";
		}
		this.base = "http://" + hostPort;
		this.wsBase = "ws://" + hostPort;
		this.socket = socket;
		this.token = token;
		this.connectTimeout = connectTimeout;
		this.requestTimeout = requestTimeout;
		this.transport = Transport.of(connectTimeout, socket);
	}

	/** A client of the daemon at {@code LODGE_URL}, with {@code LODGE_TOKEN}. */
	public static Sandbox connect() {
		return connect(new ConnectOptions());
	}

	/** A client of the daemon at {@code url} ({@code http://host:port}) with {@code token}. */
	public static Sandbox connect(String url, String token) {
		return connect(new ConnectOptions().setUrl(url).setToken(token));
	}

	/**
	 * A client as the options say; an unset URL or token is read from
	 * {@code LODGE_URL} and {@code LODGE_TOKEN}. Without a URL (or with a
	 * socket set here) it uses the
	 * local Unix socket ({@link ConnectOptions#setSocket}, else
	 * {@code $LODGE_RUNDIR/lodged.sock}, else {@code /run/lodge/lodged.sock}),
	 * with no token unless one is set here. No request is made yet.
	 */
	public static Sandbox connect(ConnectOptions o) {
		// a socket set here wins over LODGE_URL, a URL set here over both
		String url = o.url != null || o.socket != null ? o.url : System.getenv("LODGE_URL");
		String token = o.token;
		Path socket = null;
		if (url == null || url.isEmpty()) {
			url = null;
			socket = o.socket;
			if (socket == null) {
				String dir = System.getenv("LODGE_RUNDIR");
				socket = Path.of(dir != null && !dir.isEmpty() ? dir : "/run/lodge", "lodged.sock");
			}
		} else if (token == null) {
			token = System.getenv("LODGE_TOKEN");
		}
		if (token != null && token.isEmpty())
			token = null;
		return new Sandbox(url, socket, token, o.connectTimeout, o.requestTimeout);
	}

	/** The Unix socket this client uses, or null over TCP. */
	public Path socket() {
		return socket;
	}

	static String encode(String ref) {
		return URLEncoder.encode(ref, StandardCharsets.UTF_8).replace("+", "%20");
	}

	// REST

	/** A reply: its status, body and headers. */
	private static final class Reply {
		final int status;
		final byte[] body;
		final HttpFields headers;

		Reply(ContentResponse r) {
			status = r.getStatus();
			body = r.getContent();
			headers = r.getHeaders();
		}

		long header(String name, long otherwise) {
			long v = headers.getLongField(name);
			return v >= 0 ? v : otherwise;
		}
	}

	private Request request(String method, String path, Object json) {
		Request r = transport.http.newRequest(URI.create(base + path)).method(method);
		if (token != null)
			r.headers(h -> h.put(HttpHeader.AUTHORIZATION, "Bearer " + token));
		if (requestTimeout != null) { // a long poll's own wait is not the reply's delay
			Duration d = path.contains("/wait?") ? requestTimeout.plusSeconds(31) : requestTimeout;
			r.timeout(d.toMillis(), TimeUnit.MILLISECONDS);
		}
		if (json != null)
			r.body(new BytesRequestContent("application/json",
			    Json.write(json).getBytes(StandardCharsets.UTF_8)));
		return r;
	}

	private static LodgeException transport(Throwable e) {
		while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null)
			e = e.getCause();
		if (e instanceof LodgeException)
			return (LodgeException) e;
		if (e instanceof TimeoutException)
			return new LodgeTimeoutException("the request timed out: " + e.getMessage());
		return new ConnectionLostException("the daemon cannot be reached: " + e, e);
	}

	private static Reply check(Reply r) {
		if (r.status / 100 != 2)
			throw ApiException.fromReply(r.status, new String(r.body, StandardCharsets.UTF_8));
		return r;
	}

	private static CompletableFuture<Reply> send(Request r) {
		return new CompletableResponseListener(r, MAX_REPLY).send().handle((resp, e) -> {
			if (e != null)
				throw new CompletionException(transport(e));
			return new Reply(resp);
		});
	}

	private <T> T call(String method, String path, Object json, Function<Reply, T> parse) {
		Request r = request(method, path, json);
		Reply reply = Waits.await(send(r), null, () -> r.abort(new InterruptedException("interrupted")));
		return parse.apply(check(reply));
	}

	private <T> CompletableFuture<T> callAsync(String method, String path, Object json,
	    Function<Reply, T> parse) {
		return send(request(method, path, json)).thenApply(r -> parse.apply(check(r)));
	}

	private static Map<?, ?> object(Reply r) {
		try {
			Object o = Json.parse(new String(r.body, StandardCharsets.UTF_8));
			if (o instanceof Map)
				return (Map<?, ?>) o;
		} catch (IllegalArgumentException e) {
			throw new ConnectionLostException("the daemon sent bad JSON: " + e.getMessage(), e);
		}
		throw new ConnectionLostException("the daemon sent JSON that is not an object");
	}

	private static Void none(Reply r) {
		return null;
	}

	private static List<Session> sessions(Reply r) {
		List<Session> l = new ArrayList<>();
		Object s = object(r).get("sessions");
		if (s instanceof List)
			for (Object o : (List<?>) s)
				l.add(new Session((Map<?, ?>) o));
		return l;
	}

	private static SessionLog log(Reply r) {
		long start = r.header("Lodge-Log-Start", 0);
		long end = r.header("Lodge-Log-End", start + r.body.length);
		return new SessionLog(r.body, start, end);
	}

	/** {@code GET /v1/health}. */
	public Health health() {
		return call("GET", "/v1/health", null, r -> new Health(object(r)));
	}

	/** {@link #health()} as a future. */
	public CompletableFuture<Health> healthAsync() {
		return callAsync("GET", "/v1/health", null, r -> new Health(object(r)));
	}

	/**
	 * Runs a command to its end and returns its output ({@code POST
	 * /v1/exec}). A command that cannot start is {@link SpawnFailedException},
	 * never an exit code.
	 */
	public ExecResult exec(ExecOptions o) {
		boolean b64 = "base64".equals(o.encoding);
		return call("POST", "/v1/exec", o.toJson(), r -> new ExecResult(object(r), b64));
	}

	/** Runs {@code command} by the shell, with no options. */
	public ExecResult exec(String command) {
		return exec(new ExecOptions().setCommand(command));
	}

	/** {@link #exec(ExecOptions)} as a future. */
	public CompletableFuture<ExecResult> execAsync(ExecOptions o) {
		boolean b64 = "base64".equals(o.encoding);
		return callAsync("POST", "/v1/exec", o.toJson(), r -> new ExecResult(object(r), b64));
	}

	/** Starts a session ({@code POST /v1/sessions}); returns once its child has started. */
	public Session createSession(CreateSessionOptions o) {
		return call("POST", "/v1/sessions", o.toJson(), r -> new Session(object(r)));
	}

	/** {@link #createSession} as a future. */
	public CompletableFuture<Session> createSessionAsync(CreateSessionOptions o) {
		return callAsync("POST", "/v1/sessions", o.toJson(), r -> new Session(object(r)));
	}

	/** Every session. */
	public List<Session> listSessions() {
		return call("GET", "/v1/sessions", null, Sandbox::sessions);
	}

	/** {@link #listSessions} as a future. */
	public CompletableFuture<List<Session>> listSessionsAsync() {
		return callAsync("GET", "/v1/sessions", null, Sandbox::sessions);
	}

	/** A session by id or name. */
	public Session getSession(String ref) {
		return call("GET", "/v1/sessions/" + encode(ref), null, r -> new Session(object(r)));
	}

	/** {@link #getSession} as a future. */
	public CompletableFuture<Session> getSessionAsync(String ref) {
		return callAsync("GET", "/v1/sessions/" + encode(ref), null, r -> new Session(object(r)));
	}

	/** Ends a session's processes (HUP, TERM, then KILL) and forgets it. */
	public void deleteSession(String ref) {
		call("DELETE", "/v1/sessions/" + encode(ref), null, Sandbox::none);
	}

	/** {@link #deleteSession} as a future. */
	public CompletableFuture<Void> deleteSessionAsync(String ref) {
		return callAsync("DELETE", "/v1/sessions/" + encode(ref), null, Sandbox::none);
	}

	/** Sends a signal ({@code "INT"}, {@code "RTMIN+3"}) without attaching. */
	public void signalSession(String ref, String signal) {
		call("POST", "/v1/sessions/" + encode(ref) + "/signal", Map.of("signal", signal), Sandbox::none);
	}

	/** Sends text to a session's stdin without attaching. */
	public void sendInput(String ref, String text) {
		call("POST", "/v1/sessions/" + encode(ref) + "/input", Map.of("data", text), Sandbox::none);
	}

	/** Sends bytes to a session's stdin without attaching (as {@code dataBase64}). */
	public void sendInput(String ref, byte[] data) {
		call("POST", "/v1/sessions/" + encode(ref) + "/input",
		    Map.of("dataBase64", Base64.getEncoder().encodeToString(data)), Sandbox::none);
	}

	/** Resizes a session's PTY without attaching. */
	public void resizeSession(String ref, int cols, int rows) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("cols", cols);
		m.put("rows", rows);
		call("POST", "/v1/sessions/" + encode(ref) + "/resize", m, Sandbox::none);
	}

	/** The session's buffered output, without a WebSocket. */
	public byte[] sessionLog(String ref) {
		return sessionLogSince(ref, -1).data;
	}

	/** {@link #sessionLog} as a future. */
	public CompletableFuture<byte[]> sessionLogAsync(String ref) {
		return callAsync("GET", "/v1/sessions/" + encode(ref) + "/log", null, r -> r.body);
	}

	/** The buffered output from offset {@code since} (negative: all), with its offsets. */
	public SessionLog sessionLogSince(String ref, long since) {
		String q = since >= 0 ? "?since=" + since : "";
		return call("GET", "/v1/sessions/" + encode(ref) + "/log" + q, null, Sandbox::log);
	}

	/**
	 * Waits for a session's exit by the daemon's long poll ({@code GET
	 * /v1/sessions/{ref}/wait}, repeated every 30 s); an exited session
	 * answers at once. An interrupt ends it with its connection.
	 */
	public ExecExitInfo waitSession(String ref) {
		return waitSession(ref, null);
	}

	/** {@link #waitSession(String)} for at most {@code timeout} ({@link LodgeTimeoutException}). */
	public ExecExitInfo waitSession(String ref, Duration timeout) {
		long end = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
		for (;;) {
			double left = timeout == null ? 30 : Math.min(30, Math.max(0, (end - System.nanoTime()) / 1e9));
			Session s = call("GET", waitPath(ref, left), null, r -> new Session(object(r)));
			if (!s.isRunning())
				return new ExecExitInfo(s.exitCode, s.signal, false);
			if (System.nanoTime() >= end)
				throw new LodgeTimeoutException("the session still runs after " + timeout);
		}
	}

	private static String waitPath(String ref, double seconds) {
		return "/v1/sessions/" + encode(ref) + "/wait?timeout=" + String.format(java.util.Locale.ROOT, "%.3f", seconds);
	}

	/** {@link #waitSession(String)} as a future. */
	public CompletableFuture<ExecExitInfo> waitSessionAsync(String ref) {
		return callAsync("GET", waitPath(ref, 30), null, r -> new Session(object(r))).thenCompose(s -> {
			if (!s.isRunning())
				return CompletableFuture.completedFuture(new ExecExitInfo(s.exitCode, s.signal, false));
			return waitSessionAsync(ref);
		});
	}

	// WebSockets

	CompletableFuture<WsConn> openWs(String path, WsConn.Handler h) {
		return WsConn.open(transport, URI.create(wsBase + path), token, connectTimeout, h);
	}

	/**
	 * Starts a command on a WebSocket ({@code GET /v1/exec/stream}) and
	 * returns once the daemon has started it; a command that cannot start
	 * is {@link SpawnFailedException}.
	 */
	public ExecStreamHandle execStream(ExecStreamOptions o) {
		CompletableFuture<ExecStreamHandle> f = execStreamAsync(o);
		return Waits.await(f, null, () -> {
			f.cancel(true);
			f.thenAccept(ExecStreamHandle::close);
		});
	}

	/** {@link #execStream} as a future of the started handle. */
	public CompletableFuture<ExecStreamHandle> execStreamAsync(ExecStreamOptions o) {
		ExecStreamHandle h = new ExecStreamHandle(o);
		byte[] start = Codec.pack(o.startMessage());
		return openWs("/v1/exec/stream", h.handler).thenCompose(c -> {
			h.attach(c);
			c.send(start);
			return h.started;
		});
	}

	/**
	 * Attaches to a session and returns once the daemon has accepted it;
	 * the replay and then live output reach the options' callbacks.
	 */
	public SessionAttachHandle attachSession(String ref, SessionAttachOptions o) {
		SessionAttachHandle h = new SessionAttachHandle(this, ref, o);
		h.connect();
		return Waits.await(h.firstAttached, null, h::detach);
	}

	/** Attaches with no options. */
	public SessionAttachHandle attachSession(String ref) {
		return attachSession(ref, new SessionAttachOptions());
	}

	/** {@link #attachSession} as a future. */
	public CompletableFuture<SessionAttachHandle> attachSessionAsync(String ref, SessionAttachOptions o) {
		SessionAttachHandle h = new SessionAttachHandle(this, ref, o);
		h.connect();
		return h.firstAttached;
	}
}
