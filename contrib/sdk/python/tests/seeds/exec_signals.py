import lodge
sandbox = lodge.connect()

import sys

handle = sandbox.exec_stream({
    'command':  'bash',
    'tty':      True,
    'cols':     120,
    'rows':     40,
    'onStdout': lambda chunk: sys.stdout.buffer.write(chunk),
})

handle.signal('INT')
handle.signal('TERM')
