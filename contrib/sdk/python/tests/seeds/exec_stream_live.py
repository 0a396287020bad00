import lodge
sandbox = lodge.connect()

import sys

handle = sandbox.exec_stream({
    'command':  'npm install',
    'workdir':  '/workspace',
    'onStdout': lambda chunk: sys.stdout.buffer.write(chunk),
    'onStderr': lambda chunk: sys.stderr.buffer.write(chunk),
})

print(handle.wait())  # {'code': 0}
