// What the UI shows of the local API server: whether it runs, where, its error and its requests.
// The server itself (ApiServer, in ember_app_server) is built only with cpp-httplib; this face of
// it is in the Ember module either way, so that the QML that shows it is typed and checked.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QString>

class ApiServerStatus : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("the app's ApiServer")
    Q_PROPERTY(bool running READ running NOTIFY runningChanged)
    Q_PROPERTY(QString address READ address NOTIFY runningChanged)  // http://host:port/v1
    Q_PROPERTY(int port READ port NOTIFY runningChanged)            // the bound port
    Q_PROPERTY(QString error READ error NOTIFY errorChanged)        // plain words; empty: none
    Q_PROPERTY(int requestsServed READ requestsServed NOTIFY requestsServedChanged)
    Q_PROPERTY(int requestsWaiting READ requestsWaiting NOTIFY requestsServedChanged)
    Q_PROPERTY(QString modelId READ modelId NOTIFY modelIdChanged)  // "" while none is served

public:
    using QObject::QObject;

    virtual bool running() const = 0;
    virtual QString address() const = 0;
    virtual int port() const = 0;
    virtual QString error() const = 0;
    virtual int requestsServed() const = 0;
    virtual int requestsWaiting() const = 0;
    virtual QString modelId() const = 0;

signals:
    void runningChanged();
    void errorChanged();
    void requestsServedChanged();
    void modelIdChanged();
};
