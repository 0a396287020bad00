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
