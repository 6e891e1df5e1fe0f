#include "settings.h"

#include <QCoreApplication>
#include <algorithm>

#include "ember/ember.h"

namespace {
// The sampling defaults are the engine's (ember::GenerateParams), the one source: the settings
// dialog, a fresh install and "Reset to defaults" show exactly what ember-cli would use.
const ember::GenerateParams kEngine{};
// A float default as the double QML shows: 0.8f is 0.8 in the dialog, not 0.800000011920929.
double shown(float value) {
    return QString::number(value).toDouble();
}
}  // namespace

// ~/.config/<app>/<app>.conf: the app sets no organization name.
Settings::Settings(QObject* parent)
    : QObject(parent),
      m_settings(QCoreApplication::applicationName(), QCoreApplication::applicationName()) {}

QString Settings::device() const {
    return m_settings.value("device", QString("auto")).toString();
}
void Settings::setDevice(const QString& value) {
    if (device() == value) return;
    m_settings.setValue("device", value);
    emit deviceChanged();
}

int Settings::threads() const {
    return m_settings.value("cpu/threads", int(0)).toInt();
}
void Settings::setThreads(int value) {
    if (threads() == value) return;
    m_settings.setValue("cpu/threads", value);
    emit threadsChanged();
}

int Settings::contextLength() const {
    return m_settings.value("model/contextLength", int(2048)).toInt();
}
void Settings::setContextLength(int value) {
    if (contextLength() == value) return;
    m_settings.setValue("model/contextLength", value);
    emit contextLengthChanged();
}

int Settings::gpuReserveGiB() const {
    return std::max(0, m_settings.value("gpu/reserveGiB", int(0)).toInt());
}
void Settings::setGpuReserveGiB(int value) {
    value = std::max(0, value);
    if (gpuReserveGiB() == value) return;
    m_settings.setValue("gpu/reserveGiB", value);
    emit gpuReserveGiBChanged();
}

double Settings::temperature() const {
    return m_settings.value("sampling/temperature", shown(kEngine.sampling.temperature)).toDouble();
}
void Settings::setTemperature(double value) {
    if (temperature() == value) return;
    m_settings.setValue("sampling/temperature", value);
    emit temperatureChanged();
}

int Settings::topK() const {
    return m_settings.value("sampling/topK", kEngine.sampling.top_k).toInt();
}
void Settings::setTopK(int value) {
    if (topK() == value) return;
    m_settings.setValue("sampling/topK", value);
    emit topKChanged();
}

double Settings::topP() const {
    return m_settings.value("sampling/topP", shown(kEngine.sampling.top_p)).toDouble();
}
void Settings::setTopP(double value) {
    if (topP() == value) return;
    m_settings.setValue("sampling/topP", value);
    emit topPChanged();
}

double Settings::minP() const {
    return m_settings.value("sampling/minP", shown(kEngine.sampling.min_p)).toDouble();
}
void Settings::setMinP(double value) {
    if (minP() == value) return;
    m_settings.setValue("sampling/minP", value);
    emit minPChanged();
}

double Settings::repeatPenalty() const {
    return m_settings.value("sampling/repeatPenalty", shown(kEngine.sampling.repeat_penalty))
        .toDouble();
}
void Settings::setRepeatPenalty(double value) {
    if (repeatPenalty() == value) return;
    m_settings.setValue("sampling/repeatPenalty", value);
    emit repeatPenaltyChanged();
}

int Settings::maxTokens() const {
    return m_settings.value("sampling/maxTokens", kEngine.max_tokens).toInt();
}
void Settings::setMaxTokens(int value) {
    if (maxTokens() == value) return;
    m_settings.setValue("sampling/maxTokens", value);
    emit maxTokensChanged();
}

QString Settings::systemPrompt() const {
    return m_settings.value("chat/systemPrompt", QString("You are a helpful assistant."))
        .toString();
}
void Settings::setSystemPrompt(const QString& value) {
    if (systemPrompt() == value) return;
    m_settings.setValue("chat/systemPrompt", value);
    emit systemPromptChanged();
}

QString Settings::theme() const {
    return m_settings.value("ui/theme", QString("system")).toString();
}
void Settings::setTheme(const QString& value) {
    if (theme() == value) return;
    m_settings.setValue("ui/theme", value);
    emit themeChanged();
}

int Settings::fontSize() const {
    return m_settings.value("ui/fontSize", int(14)).toInt();
}
void Settings::setFontSize(int value) {
    if (fontSize() == value) return;
    m_settings.setValue("ui/fontSize", value);
    emit fontSizeChanged();
}

QString Settings::lastModelPath() const {
    return m_settings.value("model/lastPath", QString(QString())).toString();
}
void Settings::setLastModelPath(const QString& value) {
    if (lastModelPath() == value) return;
    m_settings.setValue("model/lastPath", value);
    emit lastModelPathChanged();
}

qint64 Settings::lastConversationId() const {
    return m_settings.value("session/lastConversation", 0).toLongLong();
}
void Settings::setLastConversationId(qint64 id) {
    if (lastConversationId() != id) m_settings.setValue("session/lastConversation", id);
}

bool Settings::perfOverlay() const {
    return m_settings.value("ui/perfOverlay", false).toBool();
}
void Settings::setPerfOverlay(bool value) {
    if (perfOverlay() == value) return;
    m_settings.setValue("ui/perfOverlay", value);
    emit perfOverlayChanged();
}

EngineSampling Settings::sampling() const {
    EngineSampling s;
    s.temperature = static_cast<float>(temperature());
    s.topK = topK();
    s.topP = static_cast<float>(topP());
    s.minP = static_cast<float>(minP());
    s.repeatPenalty = static_cast<float>(repeatPenalty());
    s.maxTokens = maxTokens();
    return s;
}

EngineLoadOptions Settings::loadOptions(const QString& modelPath) const {
    EngineLoadOptions o;
    o.path = modelPath.toStdString();
    o.device = (m_deviceOverride.isEmpty() ? device() : m_deviceOverride).toStdString();
    o.threads = threads();
    o.contextLength = contextLength();
    o.gpuMemReserve = uint64_t(gpuReserveGiB()) << 30;
    return o;
}

bool Settings::apiServerEnabled() const {
    return m_settings.value("apiServer/enabled", false).toBool();
}
void Settings::setApiServerEnabled(bool value) {
    if (apiServerEnabled() == value) return;
    m_settings.setValue("apiServer/enabled", value);
    emit apiServerEnabledChanged();
}

int Settings::apiServerPort() const {
    return m_settings.value("apiServer/port", int(8080)).toInt();
}
void Settings::setApiServerPort(int value) {
    if (value < 0 || value > 65535 || apiServerPort() == value) return;
    m_settings.setValue("apiServer/port", value);
    emit apiServerPortChanged();
}

QString Settings::apiServerKey() const {
    return m_settings.value("apiServer/key", QString()).toString();
}
void Settings::setApiServerKey(const QString& value) {
    if (apiServerKey() == value) return;
    m_settings.setValue("apiServer/key", value);
    emit apiServerKeyChanged();
}

bool Settings::apiServerAllowNetwork() const {
    return m_settings.value("apiServer/allowNetwork", false).toBool();
}
void Settings::setApiServerAllowNetwork(bool value) {
    if (apiServerAllowNetwork() == value) return;
    m_settings.setValue("apiServer/allowNetwork", value);
    emit apiServerAllowNetworkChanged();
}

void Settings::resetToDefaults() {
    setDevice(QString("auto"));
    setThreads(int(0));
    setContextLength(int(2048));
    setGpuReserveGiB(0);
    setTemperature(shown(kEngine.sampling.temperature));
    setTopK(kEngine.sampling.top_k);
    setTopP(shown(kEngine.sampling.top_p));
    setMinP(shown(kEngine.sampling.min_p));
    setRepeatPenalty(shown(kEngine.sampling.repeat_penalty));
    setMaxTokens(kEngine.max_tokens);
    setSystemPrompt(QString("You are a helpful assistant."));
    setTheme(QString("system"));
    setFontSize(int(14));
}
