package dev.lodge.sdk;

import java.util.Map;

/** What {@code GET /v1/health} says. */
public final class Health {
	/** {@code "ok"}. */
	public final String status;
	/** The daemon's version. */
	public final String version;
	/** The protocol version, or 0 if the daemon does not say. */
	public final int protocol;
	/** How many sessions exist. */
	public final int sessions;
	/** The largest client WebSocket message accepted. */
	public final int maxMessageBytes;

	Health(Map<?, ?> m) {
		status = Codec.strOrNull(m.get("status"));
		version = Codec.strOrNull(m.get("version"));
		protocol = m.get("protocol") instanceof Number ? ((Number) m.get("protocol")).intValue() : 0;
		sessions = m.get("sessions") instanceof Number ? ((Number) m.get("sessions")).intValue() : -1;
		Object lim = m.get("limits");
		int max = Codec.DEFAULT_MAX_MESSAGE_BYTES;
		if (lim instanceof Map && ((Map<?, ?>) lim).get("maxMessageBytes") instanceof Number)
			max = ((Number) ((Map<?, ?>) lim).get("maxMessageBytes")).intValue();
		maxMessageBytes = max;
	}
}
