package dev.lodge.sdk;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.WWWAuthenticationProtocolHandler;
import org.eclipse.jetty.client.transport.HttpClientTransportOverHTTP;
import org.eclipse.jetty.io.ArrayByteBufferPool;
import org.eclipse.jetty.io.ClientConnector;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;
import org.eclipse.jetty.websocket.core.WebSocketComponents;
import org.eclipse.jetty.websocket.core.WebSocketConnection;
import org.eclipse.jetty.websocket.core.client.WebSocketCoreClient;

/**
 * Jetty's HTTP and WebSocket clients, shared by every {@link Sandbox} with
 * the same connect timeout and endpoint (TCP, or one Unix socket): one selector, daemon threads (a program ends
 * without closing anything), connections kept alive and reused per daemon.
 */
final class Transport {
	private static final ConcurrentHashMap<String, Transport> shared = new ConcurrentHashMap<>();

	final HttpClient http;
	final WebSocketCoreClient ws;

	/** Every request of this client over one Unix socket (Jetty's TCPUnix). */
	@SuppressWarnings("try") // Jetty's own close() may throw InterruptedException
	private static final class UnixHttpClient extends HttpClient {
		private final org.eclipse.jetty.io.Transport socket;

		UnixHttpClient(HttpClientTransportOverHTTP t, Path socket) {
			super(t);
			this.socket = new org.eclipse.jetty.io.Transport.TCPUnix(socket);
		}

		@Override
		public Request newRequest(URI uri) {
			return super.newRequest(uri).transport(socket);
		}
	}

	private Transport(long connectMillis, Path socket) {
		QueuedThreadPool pool = new QueuedThreadPool();
		pool.setName("lodge-client");
		pool.setDaemon(true);
		// pooled up to 512 KiB, so that no buffer is allocated afresh for a read
		ArrayByteBufferPool buffers = new ArrayByteBufferPool(0, 4096, 512 * 1024);
		ClientConnector connector = new ClientConnector();
		connector.setByteBufferPool(buffers);
		connector.setSelectors(1);
		connector.setTCPNoDelay(true);
		HttpClientTransportOverHTTP h1 = new HttpClientTransportOverHTTP(connector);
		http = socket == null ? new HttpClient(h1) : new UnixHttpClient(h1, socket);
		http.setExecutor(pool);
		http.setByteBufferPool(buffers);
		http.setScheduler(new ScheduledExecutorScheduler("lodge-client-timer", true));
		http.setFollowRedirects(false);
		http.setMaxRequestsQueuedPerDestination(1 << 16);
		if (connectMillis > 0)
			http.setConnectTimeout(connectMillis);
		// none of the daemon's replies is compressed: no Accept-Encoding
		http.getContentDecoderFactories().clear();
		connector.setExecutor(pool);
		connector.setScheduler(http.getScheduler());
		ws = new WebSocketCoreClient(http, new WebSocketComponents(null, null, buffers, null, null, pool));
		ws.addEventListener(new Connection.Listener() {
			@Override
			public void onOpened(Connection c) {
				// reads straight into native memory: a heap buffer is
				// filled through a temporary native one and copied
				if (c instanceof WebSocketConnection)
					((WebSocketConnection) c).setUseInputDirectByteBuffers(true);
			}
		});
		try {
			http.start();
			// a 401 reaches the SDK as it is: the daemon sends no challenge
			http.getProtocolHandlers().remove(WWWAuthenticationProtocolHandler.NAME);
			ws.start();
		} catch (Exception e) {
			throw new LodgeException("cannot start the HTTP client: " + e, e);
		}
	}

	/**
	 * The clients for a connect timeout (null: Jetty's default, 15 s), over
	 * TCP or, with {@code socket}, that Unix socket.
	 */
	static Transport of(Duration connectTimeout, Path socket) {
		long ms = connectTimeout == null ? 0 : Math.max(1, connectTimeout.toMillis());
		return shared.computeIfAbsent(ms + " " + socket, k -> new Transport(ms, socket));
	}
}
