// The model catalog (resources/catalog.json, built into ember_download as
// :/ember/catalog.json): what the app offers for download.
#pragma once

#include <QList>
#include <QString>
#include <QUrl>

#include <optional>

#include "checksumverifier.h"

class Downloader;

// The transformer's dimensions, for a memory estimate before the file exists (0 = unknown).
struct CatalogShape {
    quint32 nLayer = 0, nEmbd = 0, nHead = 0, nHeadKv = 0, nFf = 0, nVocab = 0;
    quint32 headDim = 0;        // head_dim where the model's config gives one; 0: nEmbd / nHead
    quint32 slidingWindow = 0;  // sliding_window of local-attention layers (Gemma); 0: none
    bool tied = false;          // tied_embeddings: the file has no output.weight
    bool isKnown() const { return nLayer && nEmbd && nHead && nHeadKv && nFf && nVocab; }
};

struct CatalogEntry {
    QString id;        // stable key, e.g. "llama-3.2-1b-instruct"
    QString name;      // display name
    QString filename;  // the .gguf file name
    QUrl url;
    qint64 size = 0;            // exact bytes; 0: not known, the server's size is checked instead
    qint64 approxSize = 0;      // bytes to show when the exact size is not known (approx_size)
    ExpectedChecksum checksum;  // may be unset: the downloader then asks the server (HEAD)
    QString architecture;       // GGUF general.architecture, e.g. "llama"
    QString family;
    QString parameters;      // e.g. "8 billion"
    QString quantization;    // e.g. "Q4_0"
    int contextLength = -1;  // trained context in tokens; -1: unknown
    QString license;
    QString description;
    int ramRequiredGb = 0;
    bool supported = false;  // the engine can run it
    QString reason;          // why not, when unsupported
    QString chatTemplate, systemMessage, systemPrompt;
    CatalogShape shape;  // n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, head_dim

    // The size to show: the exact one, else the approximate one.
    qint64 displaySize() const { return size > 0 ? size : approxSize; }

    // Points d at this model: url, size, checksum, and DIR/filename as the destination.
    void configure(Downloader* d, const QString& modelsDir) const;
};

class Catalog {
public:
    static std::optional<Catalog> load(const QString& path, QString* error);
    static std::optional<Catalog> fromJson(const QByteArray& json, QString* error);
    // The catalog compiled into the library.
    static std::optional<Catalog> builtin(QString* error);

    const QList<CatalogEntry>& entries() const { return m_entries; }
    const CatalogEntry* find(const QString& id) const;

    // What the engine runs: its architectures and tensor types (ember::supported_architectures,
    // ember::supported_tensor_types), never a list of the app's own.
    static bool architectureSupported(const QString& architecture);
    // A tensor type ("Q4_0") or a file type of llama-quantize ("Q4_K_M") whose types all run.
    static bool quantizationSupported(const QString& quantization);
    // A Hugging Face resolve URL: its server reports the file's sha256 (X-Linked-ETag) and size.
    static bool serverReportsChecksum(const QUrl& url);

private:
    QList<CatalogEntry> m_entries;
};
