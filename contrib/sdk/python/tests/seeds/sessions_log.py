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

log = sandbox.session_log(session['id'])
print(log.decode())
