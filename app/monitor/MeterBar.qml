import QtQuick
import QtQuick.Controls.Material

// A thin horizontal gauge: value out of total; turns amber then red as it fills.
Rectangle {
    id: root
    property real value: 0
    property real total: 0
    readonly property real fraction: total > 0 ? Math.max(0, Math.min(1, value / total)) : 0
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    implicitHeight: 6
    radius: height / 2
    color: theme.track

    Rectangle {
        objectName: "meterFill"
        width: parent.width * root.fraction
        height: parent.height
        radius: parent.radius
        color: root.fraction > 0.9 ? theme.meterFull : root.fraction > 0.75 ? theme.meterHigh : theme.meterLow
    }
}
