package dev.lodge.sdk;

import java.time.Duration;

/** Where the daemon is and the client's own timeouts, for {@link Sandbox#connect(ConnectOptions)}. */
public class ConnectOptions {
	String url;
	String token;
	java.nio.file.Path socket;
	Duration connectTimeout = Duration.ofSeconds(10);
	Duration requestTimeout;

	/**
	 * Options with the defaults: LODGE_URL and LODGE_TOKEN (without a URL,
	 * the local Unix socket), connect timeout 10 s, no request timeout.
	 */
	public ConnectOptions() {
	}

	/** The daemon's URL, {@code http://host:port}. */
	public ConnectOptions setUrl(String url) { this.url = url; return this; }
	/**
	 * The daemon's Unix socket, used unless a URL is set here (it wins over
	 * {@code LODGE_URL}); without either, by default {@code $LODGE_RUNDIR/lodged.sock}, else
	 * {@code /run/lodge/lodged.sock}. The socket needs no token.
	 */
	public ConnectOptions setSocket(java.nio.file.Path socket) { this.socket = socket; return this; }
	/** The bearer token. */
	public ConnectOptions setToken(String token) { this.token = token; return this; }
	/** How long connecting (TCP and upgrade) may take on the client's side. */
	public ConnectOptions setConnectTimeout(Duration d) { this.connectTimeout = d; return this; }
	/**
	 * How long a REST call may wait for its reply on the client's side (null:
	 * for ever). Not a command's server-side {@code timeoutSeconds}.
	 */
	public ConnectOptions setRequestTimeout(Duration d) { this.requestTimeout = d; return this; }
}
