import { connect } from '@lodge/sdk'
const sandbox = await connect()

const session = await sandbox.createSession({
  name:    'shell',
  command: 'bash',
  workDir: '/workspace',
  pty:     true,
  cols:    120,
  rows:    40,
})

console.log(session.id)

const attach = sandbox.attachSession(session.id, {
  cols:     120,
  rows:     40,
  onStdout: chunk => process.stdout.write(chunk),
})

attach.write('echo hello\n')
const exit = await attach.done
console.log(exit.code)

const log = await sandbox.sessionLog(session.id)
console.log(log.toString())
