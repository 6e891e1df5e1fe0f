import QtQuick

// A thin horizontal gauge: value out of total; turns amber then red as it fills.
Rectangle {
    id: root
    property real value: 0
    property real total: 0
    readonly property real fraction: total > 0 ? Math.max(0, Math.min(1, value / total)) : 0

    implicitHeight: 6
    radius: height / 2
    color: Qt.rgba(1, 1, 1, 0.15)

    Rectangle {
        objectName: "meterFill"
        width: parent.width * root.fraction
        height: parent.height
        radius: parent.radius
        color: root.fraction > 0.9 ? "#ef5350" : root.fraction > 0.75 ? "#ffca28" : "#66bb6a"
    }
}
