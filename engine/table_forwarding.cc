// Transitional: Engine's old side-table methods forward to SessionTables
// (include/statewatch/session_tables.h) until every caller uses it; then they go.
#include "engine/engine_impl.h"
#include "statewatch/session_tables.h"

namespace statewatch::engine {

Status EngineImpl::UpsertSession(const SessionRecord& r) {
  return SessionTables(*this).UpsertSession(r);
}
Result<std::optional<SessionRecord>> EngineImpl::GetSession(const SessionName& n) const {
  return SessionTablesView(*this).GetSession(n);
}
Result<std::vector<SessionRecord>> EngineImpl::ListSessions() const {
  return SessionTablesView(*this).ListSessions();
}
Status EngineImpl::AppendTranscript(const SessionName& s, std::vector<TranscriptMessage> m) {
  return SessionTables(*this).AppendTranscript(s, std::move(m));
}
Result<std::vector<TranscriptMessage>> EngineImpl::RecentTranscript(const SessionName& s,
                                                                    std::size_t l) const {
  return SessionTablesView(*this).RecentTranscript(s, l);
}
Result<std::vector<TranscriptMessage>> EngineImpl::FirstTranscript(const SessionName& s,
                                                                   std::size_t l) const {
  return SessionTablesView(*this).FirstTranscript(s, l);
}
Status EngineImpl::PutRun(const RunRecord& r) { return SessionTables(*this).PutRun(r); }
Result<std::optional<RunRecord>> EngineImpl::GetRun(const std::string& id) const {
  return SessionTablesView(*this).GetRun(id);
}
Result<std::vector<RunRecord>> EngineImpl::ListRuns() const {
  return SessionTablesView(*this).ListRuns();
}
Result<uint64_t> EngineImpl::EnqueueDelivery(const Delivery& d) {
  return SessionTables(*this).EnqueueDelivery(d);
}
Result<bool> EngineImpl::AckDelivery(uint64_t id) { return SessionTables(*this).AckDelivery(id); }
Result<std::vector<Delivery>> EngineImpl::PendingDeliveries(const std::string& a) const {
  return SessionTablesView(*this).PendingDeliveries(a);
}
Status EngineImpl::PutUpstreamLink(const UpstreamLink& l) {
  return SessionTables(*this).PutUpstreamLink(l);
}
Status EngineImpl::DeleteUpstreamLink(const SessionName& s) {
  return SessionTables(*this).DeleteUpstreamLink(s);
}
Result<std::optional<UpstreamLink>> EngineImpl::GetUpstreamLink(const SessionName& s) const {
  return SessionTablesView(*this).GetUpstreamLink(s);
}
Result<std::vector<UpstreamLink>> EngineImpl::ListUpstreamLinks() const {
  return SessionTablesView(*this).ListUpstreamLinks();
}

}  // namespace statewatch::engine
