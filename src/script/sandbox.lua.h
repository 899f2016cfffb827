// The Lua half of the sandbox (engine.cc runs it once per state, after the libraries and the
// `redis` table are in place): Redis's global protection on stock Lua 5.1, which has no
// read-only tables of its own. Library tables and the globals become proxies whose writes fail
// with Redis's message; setmetatable, rawset and setfenv refuse them; reading a global that does
// not exist is an error; loadstring refuses precompiled chunks and gives what it loads the
// script's environment. It returns that environment, which the script is given.
#pragma once

namespace skydb::script {

inline constexpr char kSandboxPrelude[] = R"lua(
local G = _G
local rawget, rawset, setmetatable, error, tostring, type = rawget, rawset, setmetatable, error,
  tostring, type
local loadstring, getfenv, setfenv, ipairs = loadstring, getfenv, setfenv, ipairs
local readonly = setmetatable({}, {__mode = 'k'})
local function deny() error('Attempt to modify a readonly table', 2) end
local function protect(t, index)
  local lock = setmetatable({}, {__newindex = deny, __metatable = false})
  local proxy = setmetatable({}, {__index = index or t, __newindex = deny, __metatable = lock})
  readonly[proxy] = true
  readonly[lock] = true
  return proxy
end
for _, name in ipairs({'loadfile', 'dofile', 'print', 'load', 'newproxy', 'module', 'require',
                       'gcinfo'}) do
  G[name] = nil
end
G.setmetatable = function(t, mt)
  if readonly[t] then deny() end
  return setmetatable(t, mt)
end
G.rawset = function(t, k, v)
  if readonly[t] then deny() end
  return rawset(t, k, v)
end
for _, name in ipairs({'string', 'table', 'math', 'redis'}) do G[name] = protect(G[name]) end
local env
G.getfenv = function(f)
  if type(f) == 'number' and f > 0 then f = f + 1 end
  local e = getfenv(f or 2)
  if e == G then return env end
  return e
end
G.setfenv = function(f, t)
  if f == 0 or readonly[t] then deny() end
  if type(f) == 'number' then f = f + 1 end
  return setfenv(f, t)
end
G.loadstring = function(s, name)
  if type(s) == 'string' and s:byte(1) == 27 then return nil, 'binary chunks are refused' end
  local f, e = loadstring(s, name)
  if f then setfenv(f, env) end
  return f, e
end
env = protect(G, function(_, name)
  local v = rawget(G, name)
  if v == nil then
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end
  return v
end)
G._G = env
return env
)lua";

}  // namespace skydb::script
