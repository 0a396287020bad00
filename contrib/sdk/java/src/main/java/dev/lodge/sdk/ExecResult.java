package dev.lodge.sdk;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

/** The result of {@link Sandbox#exec}. */
public final class ExecResult {
	/** Stdout as the daemon sent it: text, or base64 with {@code setEncoding("base64")}. */
	public final String stdout;
	/** Stderr as the daemon sent it. */
	public final String stderr;
	/** The exit code, or null when a signal killed the command. */
	public final Integer exitCode;
	/** The signal that killed it, or null. */
	public final String signal;
	/** Whether {@code timeoutSeconds} ended it. */
	public final boolean timedOut;
	/** Whether output past {@code maxOutputBytes} was dropped. */
	public final boolean truncated;
	/** How long it ran, in milliseconds. */
	public final long durationMs;
	private final boolean base64;

	ExecResult(Map<?, ?> m, boolean base64) {
		stdout = String.valueOf(m.get("stdout"));
		stderr = String.valueOf(m.get("stderr"));
		exitCode = Codec.intOrNull(m.get("exitCode"));
		signal = Codec.strOrNull(m.get("signal"));
		timedOut = Boolean.TRUE.equals(m.get("timedOut"));
		truncated = Boolean.TRUE.equals(m.get("truncated"));
		durationMs = m.get("durationMs") instanceof Number ? ((Number) m.get("durationMs")).longValue() : 0;
		this.base64 = base64;
	}

	/** Stdout's bytes: base64 decoded when asked for, else the text's UTF-8. */
	public byte[] stdoutBytes() {
		return base64 ? Base64.getDecoder().decode(stdout) : stdout.getBytes(StandardCharsets.UTF_8);
	}

	/** Stderr's bytes, like {@link #stdoutBytes()}. */
	public byte[] stderrBytes() {
		return base64 ? Base64.getDecoder().decode(stderr) : stderr.getBytes(StandardCharsets.UTF_8);
	}

	@Override
	public String toString() {
		return "ExecResult{exitCode=" + exitCode + ", signal=" + signal + ", timedOut=" + timedOut
		    + ", truncated=" + truncated + ", stdout=" + stdout.length() + " chars}";
	}
}
