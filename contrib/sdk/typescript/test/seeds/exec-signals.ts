import { connect } from '@lodge/sdk'
const sandbox = await connect()

const handle = sandbox.execStream({
  command:  'bash',
  tty:      true,
  cols:     process.stdout.columns,
  rows:     process.stdout.rows,
  onStdout: chunk => process.stdout.write(chunk),
})

process.stdin.setRawMode?.(true)
process.stdin.on('data', chunk => handle.write(chunk))

process.stdout.on('resize', () => {
  handle.resize(process.stdout.columns, process.stdout.rows)
})

handle.signal('INT')   // Ctrl-C
handle.signal('TERM')
handle.signal('KILL')

await handle.done
