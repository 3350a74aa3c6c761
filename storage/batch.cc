// Batch: the writes of one atomic, durable Store::Write (a RocksDB WriteBatch over the
// store's families).
#include <rocksdb/write_batch.h>

#include <functional>
#include <string>

#include "storage/store.h"
#include "storage/store_rep.h"

namespace statewatch::storage {



Batch::Batch(const Store& store) : rep_(std::make_unique<Rep>()) {
  rep_->handles = &store.rep_->handles;
}
Batch::~Batch() = default;
void Batch::Put(Family f, std::string_view k, std::string_view v) {
  rep_->Note(rep_->wb.Put(rep_->cf(f), ToSlice(k), ToSlice(v)));
}
void Batch::Delete(Family f, std::string_view k) {
  rep_->Note(rep_->wb.Delete(rep_->cf(f), ToSlice(k)));
}
void Batch::DeleteRange(Family f, std::string_view b, std::string_view e) {
  rep_->Note(rep_->wb.DeleteRange(rep_->cf(f), ToSlice(b), ToSlice(e)));
}
std::size_t Batch::Count() const { return rep_->wb.Count(); }
std::size_t Batch::ByteSize() const { return rep_->wb.GetDataSize(); }
std::string_view Batch::Serialized() const {
  const std::string& data = rep_->wb.Data();
  return std::string_view(data.data(), data.size());
}
namespace {

// Maps RocksDB's column-family ids back to families while a batch is iterated.
class WriteLister final : public rocksdb::WriteBatch::Handler {
 public:
  WriteLister(const std::vector<rocksdb::ColumnFamilyHandle*>& handles,
              const std::function<void(const Batch::Write&)>& fn)
      : handles_(handles), fn_(fn) {}
  rocksdb::Status PutCF(uint32_t id, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    return Emit(Batch::Write::Op::kPut, id, k, v);
  }
  rocksdb::Status DeleteCF(uint32_t id, const rocksdb::Slice& k) override {
    return Emit(Batch::Write::Op::kDelete, id, k, rocksdb::Slice());
  }
  rocksdb::Status DeleteRangeCF(uint32_t id, const rocksdb::Slice& b,
                                const rocksdb::Slice& e) override {
    return Emit(Batch::Write::Op::kDeleteRange, id, b, e);
  }

 private:
  rocksdb::Status Emit(Batch::Write::Op op, uint32_t id, const rocksdb::Slice& k,
                       const rocksdb::Slice& v) {
    for (std::size_t i = 1; i < handles_.size(); ++i) {
      if (handles_[i]->GetID() != id) continue;
      fn_(Batch::Write{op, static_cast<Family>(i - 1), std::string_view(k.data(), k.size()),
                       std::string_view(v.data(), v.size())});
      return rocksdb::Status::OK();
    }
    return rocksdb::Status::Corruption("write to column family id " + std::to_string(id) +
                                       ", which is none of the store's families");
  }
  const std::vector<rocksdb::ColumnFamilyHandle*>& handles_;
  const std::function<void(const Batch::Write&)>& fn_;
};

}  // namespace

Status Batch::ForEachWrite(const std::function<void(const Write&)>& fn) const {
  WriteLister lister(*rep_->handles, fn);
  rocksdb::Status s = rep_->wb.Iterate(&lister);
  if (!s.ok()) return Status::Corruption("listing a write batch: " + s.ToString());
  return Status::OK();
}

void Batch::Clear() {
  rep_->wb.Clear();
  rep_->first_error = rocksdb::Status::OK();
}

}  // namespace statewatch::storage
