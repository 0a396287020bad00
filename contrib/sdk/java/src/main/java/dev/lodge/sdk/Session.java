package dev.lodge.sdk;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A session object as the daemon describes it. */
public final class Session {
	/** The opaque id. */
	public final String id;
	/** The name, or null. */
	public final String name;
	/** The command, or null when args were given. */
	public final String command;
	/** The argv, or null when a command was given. */
	public final List<String> args;
	/** The child's pid. */
	public final long pid;
	/** Whether it runs on a PTY. */
	public final boolean pty;
	/** The terminal's columns. */
	public final int cols;
	/** The terminal's rows. */
	public final int rows;
	/** The working directory. */
	public final String workDir;
	/** The user it runs as. */
	public final String user;
	/** When it was created (RFC 3339). */
	public final String createdAt;
	/** {@code "running"} or {@code "exited"}. */
	public final String state;
	/** The exit code once exited, or null. */
	public final Integer exitCode;
	/** The signal that killed it, or null. */
	public final String signal;
	/** How many clients are attached now. */
	public final int clients;
	/** The ring's size in bytes. */
	public final long bufferSize;
	/** Total output ever written: the offset of the next output byte. */
	public final long outputBytes;

	Session(Map<?, ?> m) {
		id = String.valueOf(m.get("id"));
		name = Codec.strOrNull(m.get("name"));
		command = Codec.strOrNull(m.get("command"));
		if (m.get("args") instanceof List) {
			List<String> a = new ArrayList<>();
			for (Object o : (List<?>) m.get("args"))
				a.add(String.valueOf(o));
			args = List.copyOf(a);
		} else {
			args = null;
		}
		pid = num(m.get("pid"));
		pty = Boolean.TRUE.equals(m.get("pty"));
		cols = (int) num(m.get("cols"));
		rows = (int) num(m.get("rows"));
		workDir = Codec.strOrNull(m.get("workDir"));
		user = Codec.strOrNull(m.get("user"));
		createdAt = Codec.strOrNull(m.get("createdAt"));
		state = Codec.strOrNull(m.get("state"));
		exitCode = Codec.intOrNull(m.get("exitCode"));
		signal = Codec.strOrNull(m.get("signal"));
		clients = (int) num(m.get("clients"));
		bufferSize = num(m.get("bufferSize"));
		outputBytes = num(m.get("outputBytes"));
	}

	private static long num(Object o) {
		return o instanceof Number ? ((Number) o).longValue() : 0;
	}

	/** Whether the process still runs. */
	public boolean isRunning() {
		return "running".equals(state);
	}

	@Override
	public String toString() {
		return "Session{id=" + id + ", name=" + name + ", state=" + state + ", pid=" + pid + "}";
	}
}
