import lodge
sandbox = lodge.connect()

result = sandbox.exec_command('echo hello')
print(result['stdout'])   # "hello\n"
print(result['exit_code'])

# With options
result2 = sandbox.exec_command('node index.js', workdir='/workspace', env={'NODE_ENV': 'production'})
