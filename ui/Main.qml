import QtQuick
import QtQuick.Controls
ApplicationWindow {
    required property var chat
    required property var inference
    required property var settings
    property bool askForModel: false
    width: 1100; height: 720; visible: true
    title: "Ember"
}
