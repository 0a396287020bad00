package dev.lodge.sdk;

import java.util.Map;

/** How a streamed or session process ended. */
public final class ExecExitInfo {
	/** The exit code, or null when a signal killed it. */
	public final Integer code;
	/** The name of the signal that killed it (such as {@code "TERM"}), or null. */
	public final String signal;
	/** Whether the server-side {@code timeoutSeconds} ended it. */
	public final boolean timedOut;

	/** An exit. */
	public ExecExitInfo(Integer code, String signal, boolean timedOut) {
		this.code = code;
		this.signal = signal;
		this.timedOut = timedOut;
	}

	static ExecExitInfo of(Map<String, Object> msg) {
		return new ExecExitInfo(Codec.intOrNull(msg.get("exitCode")),
		    Codec.strOrNull(msg.get("signal")), Boolean.TRUE.equals(msg.get("timedOut")));
	}

	@Override
	public String toString() {
		return "ExecExitInfo{code=" + code + ", signal=" + signal + ", timedOut=" + timedOut + "}";
	}
}
