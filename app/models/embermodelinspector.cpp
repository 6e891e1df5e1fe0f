#include "embermodelinspector.h"

#include <QStringList>
#include <algorithm>
#include <map>

#include "catalog.h"
#include "ember/ember.h"
#include "gguf/gguf.h"
#include "quant/types.h"

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

FitInfo toFitInfo(const ember::FitEstimate& e) {
    FitInfo f;
    switch (e.verdict) {
        case ember::FitEstimate::Verdict::FitsGpu:
            f.verdict = FitInfo::Verdict::FitsGpu;
            break;
        case ember::FitEstimate::Verdict::DoesNotFit:
            f.verdict = FitInfo::Verdict::DoesNotFit;
            break;
        case ember::FitEstimate::Verdict::CpuOnly:
            f.verdict = FitInfo::Verdict::CpuOnly;
            break;
        case ember::FitEstimate::Verdict::NoMemory:
            f.verdict = FitInfo::Verdict::NoMemory;
            break;
    }
    f.needed = qint64(e.total);
    f.available = qint64(e.available);
    f.device = qs(e.device);
    f.detail = qs(e.message);
    f.noGpu = e.no_gpu;
    f.cpuReason = qs(e.cpu_reason);
    f.gpuLayers = int(e.gpu_layers);
    f.nLayers = int(e.n_layers);
    return f;
}

// No estimate: the reason goes to the detail, the verdict stays Unknown.
FitInfo noEstimate(const ember::Error& error) {
    FitInfo f;
    f.detail = QObject::tr("no estimate: %1").arg(qs(error.message));
    return f;
}

}  // namespace

ModelDetails EmberModelInspector::inspect(const QString& path) {
    ModelDetails d;
    auto opened = ember::gguf::File::open(path.toStdString());
    if (!opened) {
        d.error = qs(opened.error().message);
        return d;
    }
    const ember::gguf::File& file = **opened;
    d.fileSize = qint64(file.file_size());
    const auto arch = file.get_string("general.architecture");
    if (!arch || arch->empty()) {
        d.error = QObject::tr("%1 has no general.architecture: not a model file").arg(path);
        return d;
    }
    if (file.tensors().empty()) {
        d.error = QObject::tr("%1 holds no tensors: not a model file").arg(path);
        return d;
    }
    d.architecture = qs(*arch);
    d.name = qs(file.get_string("general.name").value_or(""));
    d.contextLength = int(file.get_u32(*arch + ".context_length").value_or(0));

    // Bytes per tensor type, for the dominant type and the mix.
    std::map<std::string, uint64_t> bytesPerType;
    uint64_t totalBytes = 0;
    QStringList unsupportedTypes;
    for (const auto& t : file.tensors()) {
        d.parameters += qint64(t.n_elements());
        const std::string type(ember::type_name(t.type));
        bytesPerType[type] += t.n_bytes;
        totalBytes += t.n_bytes;
        const auto traits = ember::type_traits(t.type);
        if ((!traits || !traits->supported) && !unsupportedTypes.contains(qs(type)))
            unsupportedTypes << qs(type);
    }
    std::vector<std::pair<std::string, uint64_t>> mix(bytesPerType.begin(), bytesPerType.end());
    std::sort(mix.begin(), mix.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    QStringList parts;
    for (const auto& [type, bytes] : mix) {
        const double share = totalBytes ? 100.0 * double(bytes) / double(totalBytes) : 0;
        parts << QStringLiteral("%1 %2%").arg(qs(type)).arg(
            share < 1 ? QStringLiteral("<1") : QString::number(qRound(share)));
    }
    d.quantization = mix.empty() ? QString() : qs(mix.front().first);
    d.quantizationMix = parts.join(QStringLiteral(" · "));

    if (!Catalog::architectureSupported(d.architecture))
        d.problem = QObject::tr("architecture %1 is not supported yet").arg(d.architecture);
    else if (!unsupportedTypes.isEmpty())
        d.problem = QObject::tr("tensor type %1 is not supported yet")
                        .arg(unsupportedTypes.join(QStringLiteral(", ")));
    return d;
}

FitInfo EmberModelInspector::estimateFile(const QString& path, int contextLength,
                                          const QString& device) {
    auto est =
        ember::estimate_fit(path.toStdString(), contextLength, device.toStdString(), m_limits);
    return est ? toFitInfo(*est) : noEstimate(est.error());
}

FitInfo EmberModelInspector::estimateEntry(const CatalogEntry& entry, int contextLength,
                                           const QString& device) {
    ember::ModelShape s;
    s.arch = entry.architecture.toStdString();
    s.n_layer = entry.shape.nLayer;
    s.n_embd = entry.shape.nEmbd;
    s.n_head = entry.shape.nHead;
    s.n_head_kv = entry.shape.nHeadKv;
    s.n_ff = entry.shape.nFf;
    s.n_vocab = entry.shape.nVocab;
    s.head_dim = entry.shape.headDim;
    s.tied = entry.shape.tied;
    s.sliding_window = entry.shape.slidingWindow;
    s.n_ctx_train = uint32_t(std::max(entry.contextLength, 0));
    s.file_type = entry.quantization.toStdString();
    auto est = ember::estimate_fit(s, contextLength, device.toStdString(), m_limits);
    return est ? toFitInfo(*est) : noEstimate(est.error());
}
