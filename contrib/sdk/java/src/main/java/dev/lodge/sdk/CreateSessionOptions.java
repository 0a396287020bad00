package dev.lodge.sdk;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What {@link Sandbox#createSession} starts. */
public class CreateSessionOptions {
	String name;
	String command;
	List<String> args;
	String workDir;
	Map<String, String> env;
	String user;
	Boolean pty;
	Integer cols;
	Integer rows;
	Long bufferSize;

	/** Options with nothing set (the user's login shell on a pipe pair). */
	public CreateSessionOptions() {
	}

	/** A unique name (1 to 64 of {@code [A-Za-z0-9._-]}), usable as the session's ref. */
	public CreateSessionOptions setName(String name) { this.name = name; return this; }
	/** The command, run by the shell. */
	public CreateSessionOptions setCommand(String command) { this.command = command; return this; }
	/** An argv run directly (instead of a command). */
	public CreateSessionOptions setArgs(List<String> args) { this.args = List.copyOf(args); return this; }
	/** The working directory. */
	public CreateSessionOptions setWorkDir(String workDir) { this.workDir = workDir; return this; }
	/** Variables added to the user's default environment. */
	public CreateSessionOptions setEnv(Map<String, String> env) { this.env = new LinkedHashMap<>(env); return this; }
	/** The user to run as (only when lodged runs as root). */
	public CreateSessionOptions setUser(String user) { this.user = user; return this; }
	/** Run on a pseudo-terminal. */
	public CreateSessionOptions setPty(boolean pty) { this.pty = pty; return this; }
	/** The terminal's columns. */
	public CreateSessionOptions setCols(int cols) { this.cols = cols; return this; }
	/** The terminal's rows. */
	public CreateSessionOptions setRows(int rows) { this.rows = rows; return this; }
	/** The size of the output ring in bytes. */
	public CreateSessionOptions setBufferSize(long bytes) { this.bufferSize = bytes; return this; }

	Map<String, Object> toJson() {
		Map<String, Object> m = new LinkedHashMap<>();
		ExecOptions.put(m, "name", name);
		ExecOptions.put(m, "command", command);
		ExecOptions.put(m, "args", args);
		ExecOptions.put(m, "workDir", workDir);
		ExecOptions.put(m, "env", env);
		ExecOptions.put(m, "user", user);
		ExecOptions.put(m, "pty", pty);
		ExecOptions.put(m, "cols", cols);
		ExecOptions.put(m, "rows", rows);
		ExecOptions.put(m, "bufferSize", bufferSize);
		return m;
	}
}
