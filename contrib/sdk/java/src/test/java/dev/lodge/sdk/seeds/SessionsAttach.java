package dev.lodge.sdk.seeds;

import dev.lodge.sdk.*;
import java.nio.charset.StandardCharsets;

/** A seed example as written; only the imports and the line obtaining {@code sandbox} added. */
public class SessionsAttach {
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

SessionAttachHandle attach = sandbox.attachSession(
    session.id,
    new SessionAttachOptions()
        .setCols(120)
        .setRows(40)
        .setOnStdout(chunk ->
            System.out.print(new String(chunk, StandardCharsets.UTF_8)))
);

attach.write("echo hello\n");
attach.waitForExit();

	}
}
