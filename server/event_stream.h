// EventStream: the seam between an answer that stays open as a text/event-stream (Server-Sent
// Events) and the transport that writes it. The producer (the MCP endpoint's GET /mcp,
// server/mcp_server.h) returns one in ApiResponse::events; the transport (http_session.cc)
// writes the 200 header, then Attach()es a Sink and writes every frame handed to it as one
// HTTP/1.1 chunk, until either side ends the stream:
//   - the producer calls Sink::end() (the MCP session was deleted or expired);
//   - the transport calls Detach() (the client went away, wrote too slowly, or the server
//     shuts down). After Detach() returns the producer must not call the sink again; a call
//     racing with it is harmless (the sink holds the connection weakly).
// What a frame is (the "id:", "event:" and "data:" lines and the blank line ending them) is
// the producer's business: the transport knows nothing of SSE beyond the content type.
//
// The transport keeps at most a bounded number of frames queued per connection; a client
// that does not read them is disconnected (Detach), as WebSocket clients are.
//
// Thread-safe: Sink's functions may be called from any thread (they post onto the
// connection's executor); Attach and Detach are called once each, in that order.
#ifndef STATEWATCH_SERVER_EVENT_STREAM_H_
#define STATEWATCH_SERVER_EVENT_STREAM_H_

#include <functional>
#include <string>

namespace statewatch::server {

class EventStream {
 public:
  struct Sink {
    std::function<void(std::string frame)> write;  // queues one frame
    std::function<void()> end;                     // ends the stream; the connection closes
  };
  virtual ~EventStream() = default;
  virtual void Attach(Sink sink) = 0;
  virtual void Detach() = 0;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_EVENT_STREAM_H_
