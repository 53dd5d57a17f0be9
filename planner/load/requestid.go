package load

// RequestIDPrefix starts the X-Request-Id header the load generator sends
// with each request: the prefix and the request's number in its run
// (warmup requests first, from 0). The simulated engine reads the number
// back, so that it draws each request's delay as the planner does.
const RequestIDPrefix = "infercrane-"
