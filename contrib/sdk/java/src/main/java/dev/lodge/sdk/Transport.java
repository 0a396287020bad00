package dev.lodge.sdk;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.WWWAuthenticationProtocolHandler;
import org.eclipse.jetty.client.transport.HttpClientTransportOverHTTP;
import org.eclipse.jetty.io.ClientConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;
import org.eclipse.jetty.websocket.core.WebSocketComponents;
import org.eclipse.jetty.websocket.core.client.WebSocketCoreClient;

/**
 * Jetty's HTTP and WebSocket clients, shared by every {@link Sandbox} with
 * the same connect timeout: one selector, daemon threads (a program ends
 * without closing anything), connections kept alive and reused per daemon.
 */
final class Transport {
	private static final ConcurrentHashMap<Long, Transport> shared = new ConcurrentHashMap<>();

	final HttpClient http;
	final WebSocketCoreClient ws;

	private Transport(long connectMillis) {
		QueuedThreadPool pool = new QueuedThreadPool();
		pool.setName("lodge-client");
		pool.setDaemon(true);
		ClientConnector connector = new ClientConnector();
		connector.setSelectors(1);
		connector.setTCPNoDelay(true);
		http = new HttpClient(new HttpClientTransportOverHTTP(connector));
		http.setExecutor(pool);
		http.setScheduler(new ScheduledExecutorScheduler("lodge-client-timer", true));
		http.setFollowRedirects(false);
		http.setMaxRequestsQueuedPerDestination(1 << 16);
		if (connectMillis > 0)
			http.setConnectTimeout(connectMillis);
		// none of the daemon's replies is compressed: no Accept-Encoding
		http.getContentDecoderFactories().clear();
		connector.setExecutor(pool);
		connector.setScheduler(http.getScheduler());
		ws = new WebSocketCoreClient(http, new WebSocketComponents(null, null, null, null, null, pool));
		try {
			http.start();
			// a 401 reaches the SDK as it is: the daemon sends no challenge
			http.getProtocolHandlers().remove(WWWAuthenticationProtocolHandler.NAME);
			ws.start();
		} catch (Exception e) {
			throw new LodgeException("cannot start the HTTP client: " + e, e);
		}
	}

	/** The clients for a connect timeout (null: Jetty's default, 15 s). */
	static Transport of(Duration connectTimeout) {
		long ms = connectTimeout == null ? 0 : Math.max(1, connectTimeout.toMillis());
		return shared.computeIfAbsent(ms, Transport::new);
	}
}
