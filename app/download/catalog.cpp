#include "catalog.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>

#include "downloader.h"
#include "ember/ember.h"
#include "quant/mix.h"

namespace {

QString str(const QJsonObject& o, const char* key) {
    return o.value(QLatin1String(key)).toString();
}

}  // namespace

void CatalogEntry::configure(Downloader* d, const QString& modelsDir) const {
    d->setUrl(url);
    d->setDestination(QDir(modelsDir).filePath(filename));
    d->setExpectedSize(size > 0 ? size : -1);
    d->setChecksum(checksum);
}

bool Catalog::architectureSupported(const QString& architecture) {
    // The engine's own list, so that a family it learns is offered without an edit here.
    static const QSet<QString> kArchs = [] {
        QSet<QString> s;
        for (const std::string& a : ember::supported_architectures())
            s.insert(QString::fromStdString(a));
        return s;
    }();
    return kArchs.contains(architecture);
}

bool Catalog::quantizationSupported(const QString& quantization) {
    // The engine's own list of the tensor types it computes with.
    static const QSet<QString> kTypes = [] {
        QSet<QString> s;
        for (const std::string& t : ember::supported_tensor_types())
            s.insert(QString::fromStdString(t));
        return s;
    }();
    if (kTypes.contains(quantization.toUpper())) return true;
    // A mix such as Q4_K_M: its base type, and Q6_K / Q5_0 / Q8_0 / F32 where llama-quantize
    // deviates from it (all in kTypes). The catalog-fit test checks every tensor of each entry.
    const auto ft = ember::find_file_type(quantization.toStdString());
    return ft && kTypes.contains(QString::fromUtf8(ember::type_name(ft->base).data(),
                                                   qsizetype(ember::type_name(ft->base).size())));
}

bool Catalog::serverReportsChecksum(const QUrl& url) {
    return url.scheme() == QLatin1String("https") &&
           url.host() == QLatin1String("huggingface.co") &&
           url.path().contains(QLatin1String("/resolve/"));
}

std::optional<Catalog> Catalog::load(const QString& path, QString* error) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error) *error = QStringLiteral("cannot read %1: %2").arg(path, file.errorString());
        return std::nullopt;
    }
    QString why;
    auto catalog = fromJson(file.readAll(), &why);
    if (!catalog && error) *error = path + ": " + why;
    return catalog;
}

std::optional<Catalog> Catalog::builtin(QString* error) {
    return load(QStringLiteral(":/ember/catalog.json"), error);
}

std::optional<Catalog> Catalog::fromJson(const QByteArray& json, QString* error) {
    auto bad = [error](const QString& message) -> std::optional<Catalog> {
        if (error) *error = message;
        return std::nullopt;
    };
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (!doc.isObject())
        return bad(QStringLiteral("not a JSON object: %1").arg(parseError.errorString()));
    const QJsonObject root = doc.object();
    if (root.value(QStringLiteral("version")).toInt() != 1)
        return bad(QStringLiteral("unsupported catalog version (expected 1)"));
    Catalog catalog;
    QSet<QString> ids;
    const QJsonArray models = root.value(QStringLiteral("models")).toArray();
    for (int i = 0; i < models.size(); i++) {
        const QJsonObject o = models[i].toObject();
        CatalogEntry e;
        e.id = str(o, "id");
        const QString where = QStringLiteral("model %1 (%2)").arg(i).arg(e.id);
        if (e.id.isEmpty() || ids.contains(e.id)) return bad(where + ": missing or duplicate id");
        ids.insert(e.id);
        e.name = str(o, "name");
        e.filename = str(o, "filename");
        if (e.name.isEmpty()) return bad(where + ": missing name");
        if (!e.filename.endsWith(QLatin1String(".gguf")) || e.filename.contains('/') ||
            e.filename.contains('\\') || e.filename.startsWith('.'))
            return bad(where + ": filename must be a plain *.gguf name, got '" + e.filename + "'");
        e.url = QUrl(str(o, "url"), QUrl::StrictMode);
        if (!e.url.isValid() || e.url.scheme() != QLatin1String("https"))
            return bad(where + ": url must be https");
        QString why;
        if (o.contains(QStringLiteral("sha256")))
            e.checksum = ExpectedChecksum::parse(QStringLiteral("sha256"), str(o, "sha256"), &why);
        else if (o.contains(QStringLiteral("md5")))
            e.checksum = ExpectedChecksum::parse(QStringLiteral("md5"), str(o, "md5"), &why);
        if (!why.isEmpty()) return bad(where + ": " + why);
        // Without an exact size or checksum, the file is checked against what the server reports
        // for it, so only a server that reports both may stand in.
        if (o.contains(QStringLiteral("size"))) {
            e.size = qint64(o.value(QStringLiteral("size")).toDouble(0));
            if (e.size <= 0) return bad(where + ": size must be positive");
        } else {
            e.approxSize = qint64(o.value(QStringLiteral("approx_size")).toDouble(0));
            if (e.approxSize <= 0)
                return bad(where + ": size (exact bytes) or approx_size must be positive");
        }
        if ((!e.size || !e.checksum.isSet()) && !serverReportsChecksum(e.url))
            return bad(where + ": without size and checksum the url must be a Hugging Face " +
                       "resolve URL, whose server reports them (X-Linked-Size, X-Linked-ETag)");
        e.architecture = str(o, "architecture");
        e.family = str(o, "family");
        e.parameters = str(o, "parameters");
        e.quantization = str(o, "quantization");
        e.contextLength = o.value(QStringLiteral("context_length")).toInt(-1);
        e.license = str(o, "license");
        e.description = str(o, "description");
        e.ramRequiredGb = o.value(QStringLiteral("ram_required_gb")).toInt(0);
        e.supported = o.value(QStringLiteral("supported")).toBool(false);
        e.reason = str(o, "reason");
        e.chatTemplate = str(o, "chat_template");
        e.systemMessage = str(o, "system_message");
        e.systemPrompt = str(o, "system_prompt");
        quint32* dims[] = {&e.shape.nLayer,  &e.shape.nEmbd,        &e.shape.nHead,
                           &e.shape.nHeadKv, &e.shape.nFf,          &e.shape.nVocab,
                           &e.shape.headDim, &e.shape.slidingWindow};
        const char* dimKeys[] = {"n_layer", "n_embd",  "n_head",   "n_head_kv",
                                 "n_ff",    "n_vocab", "head_dim", "sliding_window"};
        for (int d = 0; d < 8; d++) {
            const QJsonValue v = o.value(QLatin1String(dimKeys[d]));
            if (v.isUndefined() || v.isNull()) continue;
            const double n = v.toDouble(-1);
            if (n < 1 || n > 1e7 || n != double(quint32(n)))
                return bad(where + ": " + dimKeys[d] + " must be a positive integer");
            *dims[d] = quint32(n);
        }
        e.shape.tied = o.value(QStringLiteral("tied_embeddings")).toBool(false);
        if (e.shape.nHead && e.shape.nHeadKv &&
            (e.shape.nHead % e.shape.nHeadKv ||
             (e.shape.nEmbd && !e.shape.headDim && e.shape.nEmbd % e.shape.nHead)))
            return bad(where + ": n_head must be a multiple of n_head_kv and divide n_embd " +
                       "(or head_dim be given)");
        if (e.supported &&
            !(architectureSupported(e.architecture) && quantizationSupported(e.quantization)))
            return bad(where + ": marked supported, but the engine does not run " + e.architecture +
                       " " + e.quantization);
        if (!e.supported && e.reason.isEmpty())
            return bad(where + ": unsupported without a reason");
        catalog.m_entries.push_back(e);
    }
    return catalog;
}

const CatalogEntry* Catalog::find(const QString& id) const {
    for (const auto& e : m_entries)
        if (e.id == id) return &e;
    return nullptr;
}
