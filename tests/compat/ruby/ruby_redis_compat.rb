# ruby-redis (Debian's ruby-redis) on its default settings over the unix socket: a multi block
# and its results (Redis::Future values included), a command failing inside EXEC, a watch
# block that a concurrent change makes EXEC answer nil and the retry that follows, unwatch,
# discard, and the plain pipelined block for contrast.
require 'redis'

def fail_step(step, message)
  warn "FAIL [ruby_redis_compat.rb] #{step}: #{message}"
  exit 1
end

def expect(step, got, want)
  fail_step(step, "got #{got.inspect}, expected #{want.inspect}") unless got == want
  got
end

def run(step)
  yield
rescue SystemExit
  raise
rescue StandardError => e
  fail_step(step, "#{e.class}: #{e.message} (at #{e.backtrace&.first})")
end

socket = ENV.fetch('SKYDB_COMPAT_SOCKET')
redis = Redis.new(path: socket, timeout: 10)
other = Redis.new(path: socket, timeout: 10)

run('PING') { expect('PING', redis.ping, 'PONG') }

run('multi block') do
  future = nil
  results = redis.multi do |tx|
    tx.set('rb:k', 'v')
    future = tx.get('rb:k')
    tx.incr('rb:n')
    tx.incrby('rb:n', 4)
    tx.expire('rb:k', 600)
  end
  expect('multi results', results, ['OK', 'v', 1, 5, true])
  expect('Redis::Future value after EXEC', future.value, 'v')
  expect('TTL set inside multi', redis.ttl('rb:k'), 600)
end

run('multi with a failing command') do
  redis.set('rb:s', 'text')
  begin
    redis.multi do |tx|
      tx.incr('rb:s')
      tx.set('rb:after', 'yes')
    end
    fail_step('multi with a failing INCR', 'no Redis::CommandError raised')
  rescue Redis::CommandError => e
    fail_step('multi with a failing INCR', e.message) unless e.message =~ /not an integer/
  end
  expect('the later SET ran (EXEC does not roll back)', redis.get('rb:after'), 'yes')
end

run('watch conflict') do
  redis.set('rb:w', '10')
  attempts = 0
  loop do
    result = redis.watch('rb:w') do |conn|
      current = conn.get('rb:w').to_i
      other.set('rb:w', '100') if attempts.zero?  # a concurrent writer
      conn.multi { |tx| tx.set('rb:w', (current + 1).to_s) }
    end
    break expect('EXEC after the retry', result, ['OK']) unless result.nil?

    attempts += 1  # EXEC answered nil: the watched key changed
    fail_step('watch retry loop', 'EXEC answered nil on 4 attempts') if attempts > 3
  end
  expect('watch conflicts seen', attempts, 1)
  expect('value after the retry', redis.get('rb:w'), '101')
end

run('unwatch and discard') do
  expect('WATCH', redis.watch('rb:w'), 'OK')
  other.set('rb:w', 'x')
  expect('UNWATCH', redis.unwatch, 'OK')
  expect('multi after UNWATCH', redis.multi { |tx| tx.set('rb:w', 'y') }, ['OK'])
  result = redis.watch('rb:w') do |conn|
    conn.unwatch
    :unwatched
  end
  expect('watch block returning early', result, :unwatched)
  expect('MULTI without a block', redis.multi, 'OK')
  expect('SET while queued', redis.set('rb:w', 'z'), 'QUEUED')
  expect('DISCARD', redis.discard, 'OK')
  expect('value after DISCARD', redis.get('rb:w'), 'y')
  expect('DISCARD outside MULTI', begin
    redis.discard
  rescue Redis::CommandError => e
    e.message
  end, 'ERR DISCARD without MULTI')
end

run('pipelined') do
  results = redis.pipelined do |pipe|
    pipe.set('rb:p', '1')
    pipe.get('rb:p')
  end
  expect('pipelined results', results, ['OK', '1'])
end

redis.close
other.close
puts "PASS [ruby_redis_compat.rb] against #{ENV['SKYDB_COMPAT_SERVER']}"
