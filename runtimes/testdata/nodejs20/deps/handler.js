const { greet } = require('greet')

exports.handle = async (event) => ({ greeting: greet(event.name) })
