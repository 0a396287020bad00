package dev.lodge.sdk.seeds;

import dev.lodge.sdk.*;

/** A seed example as written; only the imports and the line obtaining {@code sandbox} added. */
public class SessionsCreate {
	public static void main(String[] argv) {
Sandbox sandbox = Sandbox.connect();

Session session = sandbox.createSession(
    new CreateSessionOptions()
        .setName("shell")
        .setCommand("bash")
        .setWorkDir("/workspace")
        .setPty(true)
        .setCols(120)
        .setRows(40)
);

System.out.println(session.id);

	}
}
