// Bare node:http baseline for BenchmarkWrapper: same answer as the sample's "/".
'use strict'
const http = require('node:http')

const body = Buffer.from('{"ok":true}')
http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length })
  res.end(body)
}).listen(Number(process.env.PORT), '127.0.0.1')
