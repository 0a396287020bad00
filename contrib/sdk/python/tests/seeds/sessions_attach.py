import lodge
sandbox = lodge.connect()

session = sandbox.create_session({
    'name':    'shell',
    'command': 'bash',
    'workDir': '/workspace',
    'pty':     True,
    'cols':    120,
    'rows':    40,
})

print(session['id'])

import sys

attach = sandbox.attach_session(
    session['id'],
    {
        'cols':     120,
        'rows':     40,
        'onStdout': lambda chunk: sys.stdout.buffer.write(chunk),
    },
)

attach.write('echo hello\n')
print(attach.wait())
